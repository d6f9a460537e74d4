# Shared by scripts/serve and scripts/test: a project-local virtualenv and Debian packages.
VENV="${WIRESERVER_VENV:-$PWD/.venv}"

ensure_venv() {  # ensure_venv PIP_TARGET: create .venv if missing, install the project into it
    if [ ! -x "$VENV/bin/python" ]; then
        python3 -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$1"
}

ensure_apt() {  # ensure_apt COMMAND PACKAGE...: install Debian packages unless COMMAND is on PATH
    local cmd="$1"; shift
    if command -v "$cmd" >/dev/null 2>&1; then return 0; fi
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

ensure_python_headers() {  # Python.h for the venv's Python (C extensions: the compiled build)
    "$VENV/bin/python" -c 'import os, sysconfig
raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' &&
        return 0
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-dev >/dev/null
}
