"""The one lock-graph computation: who waits for whom, each waiter's chain, the roots.

Pure and generic over engines: nodes are PostgreSQL pids or MySQL/MariaDB thread ids.
Serves PG101, PG001/MY001/MY002 (a blocked transaction names its blocker), MY101 and
`terminate --blocking` (actions import it; checks never import actions).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Generic, TypeVar

from ..frozen import frozen

if TYPE_CHECKING:
    from ..snapshot import Snapshot
    from ..snapshot.my import MyLockWaits
    from ..snapshot.pg import PgSession

Node = TypeVar("Node", bound=Hashable)  # a pid or a thread id


@frozen
class LockGraph(Generic[Node]):
    """waiter -> the sessions it waits for, in the order the server listed them."""

    edges: dict[Node, tuple[Node, ...]] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[Node | None, Node | None]]) -> LockGraph[Node]:
        edges: dict[Node, list[Node]] = {}
        for waiter, blocker in pairs:
            if waiter is None or blocker is None or waiter == blocker:
                continue
            blockers = edges.setdefault(waiter, [])
            if blocker not in blockers:
                blockers.append(blocker)
        return cls({w: tuple(b) for w, b in edges.items()})

    @classmethod
    def from_blocked_by(cls, blocked_by: Mapping[Node, Iterable[Node] | None]) -> LockGraph[Node]:
        return cls.from_pairs((w, b) for w, bs in blocked_by.items() for b in bs or ())

    def among(self, waiters: Iterable[Node]) -> LockGraph[Node]:
        """The waits of `waiters` only (a target's database out of the cluster's graph): the
        same edges a build from their rows alone gives, without building again."""
        keep = set(waiters)
        return LockGraph({w: b for w, b in self.edges.items() if w in keep})

    def waiting(self, node: Node) -> bool:
        return bool(self.edges.get(node))

    def blockers(self, node: Node) -> tuple[Node, ...]:
        return self.edges.get(node, ())

    def chain(self, node: Node) -> list[Node]:
        """node, its first blocker, that one's first blocker … up to a session that is not
        waiting (the root), or until the path would repeat (a cycle)."""
        path = [node]
        while True:
            nxt = next((b for b in self.blockers(path[-1]) if b not in path), None)
            if nxt is None:
                return path
            path.append(nxt)

    def roots_of(self, node: Node) -> list[Node]:
        """Every root (a blocker that waits for nobody) behind node, nearest first."""
        seen, queue, out = {node}, [node], list[Node]()
        while queue:
            current = queue.pop(0)
            for b in self.blockers(current):
                if b in seen:
                    continue
                seen.add(b)
                if self.waiting(b):
                    queue.append(b)
                else:
                    out.append(b)
        return out

    def root_of(self, node: Node) -> Node | None:
        """The nearest root behind node; None if it waits only inside a cycle (a deadlock
        the server has not broken yet) or does not wait at all."""
        roots = self.roots_of(node)
        return roots[0] if roots else None

    def roots(self) -> dict[Node, int]:
        """root -> how many sessions wait behind it, directly or through others."""
        behind: dict[Node, set[Node]] = {}
        for waiter in self.edges:
            for root in self.roots_of(waiter):
                behind.setdefault(root, set()).add(waiter)
        return {root: len(waiters) for root, waiters in behind.items()}


def pg_graph_of(sessions: Iterable[PgSession]) -> LockGraph[int]:
    """The lock graph of pg.sessions rows (pg_blocking_pids of each waiting backend)."""
    return LockGraph.from_blocked_by({s.pid: s.blocked_by for s in sessions})


def my_graph_of(data: MyLockWaits | None) -> LockGraph[int]:
    """The lock graph of a my.lock_waits section (thread ids)."""
    waits = data.waits if data is not None else ()
    return LockGraph.from_pairs((w.waiting_thread_id, w.blocking_thread_id) for w in waits)


def my_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    """The lock graph of my.lock_waits (thread ids), once per snapshot (Snapshot.model); empty
    when it was not read. Here, not in checks.models: a MySQL audit imports no PostgreSQL
    rows, a PostgreSQL one no MySQL rows (imported when called)."""
    return snapshot.model("my.lock_graph", _my_lock_graph)


def _my_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    from ..snapshot.memo import per_read
    from ..snapshot.my import MY_LOCK_WAITS

    data = snapshot.get(MY_LOCK_WAITS)
    if data is None:
        return my_graph_of(None)
    # once per read: my.lock_waits is server-wide, shared by the server's targets
    return per_read(data, "my.lock_graph", lambda: my_graph_of(data))
