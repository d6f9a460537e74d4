"""Test-broker controls: faults and delays a test injects into a running broker (issue #19).
They cost nothing while unused: the server checks one attribute for None and does nothing else."""
