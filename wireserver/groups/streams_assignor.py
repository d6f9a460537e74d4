"""The ``sticky`` task assignor of Streams groups (``group.streams.assignors``' default in
Kafka 4.4), kept small: the same goals as Kafka's ``StickyTaskAssignor`` in the same order, not
its exact choices.

1. Active tasks: each member keeps the active tasks it had (its current assignment, else the
   previous target) while it holds no more than its share (ceil(tasks / members)); the rest
   go, one at a time in task order, to the member with the fewest tasks (ties: the member that
   had the task as a standby, then member id).
2. Standby tasks (``num_standby`` per task): on members of other processes than the task's
   active owner, never two copies in one process; previous standby owners first, then the
   least loaded.

Warm-up tasks are not planned (Kafka plans them when a caught-up standby should take over an
active task; we move active tasks at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wireserver.groups.streams_group import TargetAssignment, Tasks

ASSIGNOR_NAMES = ("sticky",)


@dataclass
class MemberSpec:
    member_id: str
    process_id: str
    previous_active: Tasks = field(default_factory=dict)
    previous_standby: Tasks = field(default_factory=dict)


def assign(
    members: list[MemberSpec], tasks: Tasks, num_standby: int
) -> dict[str, TargetAssignment]:
    out = {m.member_id: TargetAssignment() for m in members}
    if not members:
        return out
    all_tasks = sorted((s, p) for s, ps in tasks.items() for p in ps)
    load = {m.member_id: 0 for m in members}
    share = -(-len(all_tasks) // len(members))
    owner: dict[tuple[str, int], str] = {}
    by_id = {m.member_id: m for m in members}
    for m in sorted(members, key=lambda m: m.member_id):
        for s, ps in sorted(m.previous_active.items()):
            for p in sorted(ps):
                if (s, p) in owner or p not in tasks.get(s, ()) or load[m.member_id] >= share:
                    continue
                owner[(s, p)] = m.member_id
                load[m.member_id] += 1
    for task in all_tasks:
        if task in owner:
            continue
        s, p = task
        chosen = min(
            members,
            key=lambda m: (load[m.member_id], p not in m.previous_standby.get(s, ()), m.member_id),
        )
        owner[task] = chosen.member_id
        load[chosen.member_id] += 1
    for (s, p), member_id in owner.items():
        out[member_id].active.setdefault(s, set()).add(p)
    for task in all_tasks if num_standby > 0 else []:
        s, p = task
        used = {by_id[owner[task]].process_id}
        for _ in range(num_standby):
            candidates = [m for m in members if m.process_id not in used]
            if not candidates:
                break
            chosen = min(
                candidates,
                key=lambda m: (
                    p not in m.previous_standby.get(s, ()),
                    load[m.member_id],
                    m.member_id,
                ),
            )
            out[chosen.member_id].standby.setdefault(s, set()).add(p)
            load[chosen.member_id] += 1
            used.add(chosen.process_id)
    return out
