"""The figures of ``benchmarks.mark_client`` as a table: the goals of issue 16, the ratios between cases, and the
Markdown the benchmark prints (kept apart from the orchestration so each reads on its own)."""

from __future__ import annotations

from typing import Any

POLICIES = ("pooled", "fresh")
FLOOR_CLIENTS = ("locust-floor", "udp-floor")  # the floors under MarkUser's CPU (no QUIC engine, no engine column)
ANCHOR_CLIENT = "fasthttp"  # Locust's FastHttpUser GET on nginx: what a pooled MarkUser FETCH is held against
NO_ENGINE_CLIENTS = (*FLOOR_CLIENTS, ANCHOR_CLIENT)

GOALS = {
    "pooled_cpu_us": 200.0,
    "pooled_over_memory": 2.0,
    "fresh_cpu_us": 1600.0,
    "cpu_over_16": 1.5,
    "kib_per_connection": 60.0,
    "kib_per_added_connection": 40.0,
    "pooled_over_fasthttp": 1.0,
}
HEADER = (
    "client",
    "engine",
    "connection",
    "users",
    "paced req/s",
    "FETCH/s",
    "CPU µs/FETCH",
    "CPU use",
    "of it sys",
    "p50 ms",
    "p99 ms",
    "server µs/FETCH",
    "KiB/conn",
    "failed",
    "load",
)


def ratios(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Per engine: MarkUser over its in-memory floor, over the sum of the floors it cannot go below (the engine in
    memory, Locust's bookkeeping, one UDP round trip) and over aioquic's asyncio client; engine against engine; and
    the scaling table's CPU per FETCH against its 16-user row."""

    def cpu(client: str, engine: str | None, policy: str, users: int | None, paced: bool = False) -> float | None:
        for case in cases:
            if (
                (case["client"], case["connection"]) == (client, policy)
                and engine in (None, case["engine"])
                and users in (None, case["users"])
                and bool(case["pace"]) == paced
            ):
                return case["cpu_us_per_fetch"]
        return None

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 2) if a and b else None

    out: dict[str, Any] = {}
    engines = list(dict.fromkeys(c["engine"] for c in cases if c["client"] == "locust" and not c["pace"]))
    user_counts = sorted({c["users"] for c in cases if c["client"] == "locust" and not c["pace"]})
    for engine in engines:
        memory = {c["connection"]: c for c in cases if c["client"] == "memory" and c["engine"] == engine}
        for users in user_counts:
            for policy in POLICIES:
                mark = cpu("locust", engine, policy, users)
                out[f"{engine}:{policy}_cpu_us@{users}"] = mark
                out[f"{engine}:{policy}_over_memory@{users}"] = ratio(mark, cpu("memory", engine, policy, None))
                out[f"{engine}:{policy}_over_asyncio@{users}"] = ratio(mark, cpu("asyncio", None, policy, users))
            fresh, pooled = cpu("locust", engine, "fresh", users), cpu("locust", engine, "pooled", users)
            anchor = cpu(ANCHOR_CLIENT, None, "pooled", users)
            out[f"{ANCHOR_CLIENT}_cpu_us@{users}"] = anchor
            out[f"{engine}:pooled_over_fasthttp@{users}"] = ratio(pooled, anchor)
            out[f"{engine}:connection_cpu_us@{users}"] = round(fresh - pooled, 1) if fresh and pooled else None
            floors = [cpu("memory", engine, "pooled", None)]
            floors += [cpu(client, None, "pooled", users) for client in FLOOR_CLIENTS]
            if pooled and all(floors):
                floor_sum = sum(floor for floor in floors if floor)
                out[f"{engine}:floor_sum_cpu_us@{users}"] = round(floor_sum, 1)
                out[f"{engine}:pooled_over_floor_sum@{users}"] = ratio(pooled, floor_sum)
                out[f"{engine}:pooled_own_cpu_us@{users}"] = round(pooled - floor_sum, 1)
        paced_floor = memory.get("pooled", {}).get("cpu_us_per_fetch_paced")
        out[f"{engine}:memory_pooled_paced_cpu_us"] = paced_floor
        out[f"{engine}:pooled_over_paced_memory@1"] = ratio(cpu("locust", engine, "pooled", 1), paced_floor)
        out[f"{engine}:memory_handshake_cpu_us"] = memory.get("fresh", {}).get("handshake_cpu_us")
    if len(engines) > 1:
        for users in user_counts:
            for policy in POLICIES:
                out[f"{engines[1]}_over_{engines[0]}:{policy}@{users}"] = ratio(
                    cpu("locust", engines[1], policy, users), cpu("locust", engines[0], policy, users)
                )
    scaling = sorted((c for c in cases if c["pace"]), key=lambda c: c["users"])
    base = next((c["cpu_us_per_fetch"] for c in scaling if c["users"] == 16), None)
    first = scaling[0] if scaling else None
    for case in scaling:
        out[f"scaling:cpu_over_16@{case['users']}"] = ratio(case["cpu_us_per_fetch"], base)
        out[f"scaling:kib_per_connection@{case['users']}"] = case.get("generator_kib_per_connection")
        if first is not None and case["users"] > first["users"]:  # the growth per added connection, free of the
            grown = _kib(case) - _kib(first)  # process's fixed cost that a small row divides by few users
            out[f"scaling:kib_per_added_connection@{case['users']}"] = round(
                grown / (case["users"] - first["users"]), 1
            )
    return out


def _kib(case: dict[str, Any]) -> float:
    """The generator's whole memory growth in a scaling row (its per-connection figure times its users)."""
    return float(case.get("generator_kib_per_connection") or 0.0) * case["users"]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return f"{value:.2f}" if isinstance(value, float) and value < 10 else str(value)


def render(doc: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for c in doc["cases"]:
        cells = (
            c["client"],
            c["engine"],
            c["connection"],
            c["users"],
            c["pace"] or "",
            c["req_per_s"],
            c["cpu_us_per_fetch"],
            f"{c['cpu_use'] * 100:.0f} %",
            f"{c['sys_share'] * 100:.0f} %",
            c["p50_ms"],
            c["p99_ms"],
            c["server_cpu_us_per_fetch"],
            c.get("generator_kib_per_connection"),
            c["failures"],
            c.get("load_average"),
        )
        lines.append("| " + " | ".join(_cell(v) for v in cells) + " |")
    if doc.get("load_average"):
        lines.append(f"load average at the end: {', '.join(map(str, doc['load_average']))} (each case's in its row)")
    lines.append("")
    if any(len(c.get("rounds_cpu_us_per_fetch", [])) > 1 for c in doc["cases"]):
        lines += ["CPU µs/FETCH in each round (the table shows the median round):"]
        lines += [
            f"  {c['client']}/{c['engine'] or '-'}/{c['connection']}/{c['users']}{'/paced' if c['pace'] else ''}: "
            + ", ".join(f"{v:g}" for v in c["rounds_cpu_us_per_fetch"])
            for c in doc["cases"]
        ]
        lines.append("")
    for key, value in doc["ratios"].items():
        goal = next((f" (goal ≤ {g:g})" for k, g in GOALS.items() if key.split(":")[-1].startswith(k)), "")
        lines.append(f"{key}: {_cell(value)}{goal}")
    profile = doc.get("profile")
    if profile:
        lines += [
            "",
            f"{profile['profiler']} of locust/{doc['profile_case']['engine']}/pooled/"
            f"{doc['profile_case']['users']} users "
            f"({profile['total']} {profile['unit']}), own time by part: "
            + ", ".join(f"{part} {share * 100:.0f} %" for part, share in profile["by_part"].items()),
            f"| own {profile['unit']} | share | part | function |",
            "|---|---|---|---|",
        ]
        lines += [f"| {r['self']} | {r['share'] * 100:.1f} % | {r['part']} | {r['function']} |" for r in profile["top"]]
    return "\n".join(lines)
