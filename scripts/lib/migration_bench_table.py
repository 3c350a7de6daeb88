# SPDX-License-Identifier: GPL-2.0-or-later
"""The summary of scripts/migration-bench's runs (scripts/lib/migration_bench.py):
per row, VRAM size and mode, the median and the spread (min-max) of each
figure over the runs that passed, the load average beside them, and the
ratio of vgpud's median to embedded's; a markdown table of it."""
import statistics

FIGURES = ("downtime_ms", "stop_to_resume_ms", "total_ms", "mib_sent", "passes", "stall_ms", "beat_median_gap_ms",
           "pending_mib", "stop_s_per_gib_pending", "freeze_ms", "load")


def figures(r):
    m = r["moves"][0] if r.get("moves") else {}
    pending = r.get("pending_at_stop_bytes")
    return {"downtime_ms": m.get("downtime_ms"), "stop_to_resume_ms": m.get("stop_to_resume_ms"),
            "total_ms": m.get("total_ms"), "mib_sent": round((m.get("bytes") or 0) / 2**20, 1) if m else None,
            "passes": m.get("passes"), "stall_ms": r.get("stall_ms"), "beat_median_gap_ms": r.get("beat_median_gap_ms"),
            "pending_mib": round(pending / 2**20, 1) if pending is not None else None,
            "stop_s_per_gib_pending": r.get("stop_s_per_gib_pending"),
            "freeze_ms": round(r["source_freeze_us"] / 1000, 1) if r.get("source_freeze_us") is not None else None,
            "load": (r["load_before"] + r["load_after"]) / 2}


def ok(r):
    return "error" not in r and r["failed"] == 0 and r["passed"] > 0 and bool(r.get("moves"))


def run_line(r):
    f = figures(r)
    verdict = "ok" if ok(r) else "FAILED: %s" % r.get("error", "%d failed" % r["failed"])
    return "%s %s %d MiB #%d (load %.1f): %s" % (r["row"], r["mode"], r["vram_mib"], r.get("repeat", 1), f["load"],
                                                 ", ".join("%s %s" % (k, v) for k, v in f.items() if k != "load")
                                                 + "; " + verdict)


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summary(runs):
    groups = {}
    for r in runs:
        groups.setdefault((r["row"], r["vram_mib"], r["mode"]), []).append(r)
    out = []
    for (row, vram, mode), rs in groups.items():
        good = [r for r in rs if ok(r)]
        entry = {"row": row, "vram_mib": vram, "mode": mode, "runs": len(rs), "passed": len(good)}
        for k in FIGURES:
            entry[k] = spread(figures(r)[k] for r in good)
        out.append(entry)
    for e in out:
        if e["mode"] != "vgpud":
            continue
        base = [b for b in out if b["mode"] == "embedded" and (b["row"], b["vram_mib"]) == (e["row"], e["vram_mib"])]
        for k in ("total_ms", "downtime_ms", "stop_to_resume_ms"):
            if base and base[0][k] and e[k] and base[0][k]["median"]:
                e["ratio_" + k] = round(e[k]["median"] / base[0][k]["median"], 2)
    return out


def cell(s, digits=0):
    if s is None:
        return "-"
    fmt = "%%.%df" % digits
    if s["min"] == s["max"]:
        return fmt % s["median"]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (s["median"], s["min"], s["max"])


def table(entries):
    head = ("row", "VRAM MiB", "mode", "ok/runs", "load", "downtime ms", "STOP->RESUME ms", "total ms", "MiB sent",
            "passes", "stall ms (beat gap across the stop)", "beat gap median ms", "pending at stop MiB",
            "stop s per GiB pending", "source freeze ms", "vgpud/embedded total, downtime")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in entries:
        ratio = "%s, %s" % (e.get("ratio_total_ms", "-"), e.get("ratio_downtime_ms", "-")) if e["mode"] == "vgpud" else ""
        cells = (e["row"], e["vram_mib"], e["mode"], "%d/%d" % (e["passed"], e["runs"]), cell(e["load"], 1),
                 cell(e["downtime_ms"]), cell(e["stop_to_resume_ms"], 1), cell(e["total_ms"]), cell(e["mib_sent"]),
                 cell(e["passes"]), cell(e["stall_ms"]), cell(e["beat_median_gap_ms"]), cell(e["pending_mib"]),
                 cell(e["stop_s_per_gib_pending"], 2), cell(e["freeze_ms"], 1), ratio)
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)
