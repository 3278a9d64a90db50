"""Nsight Compute's `--csv` output (one row per launch and metric) as launches: [(ID, kernel name, {metric: value})]
in launch order, the values as printed less their thousands separators. Lines before the table's header and after
it (the profiled program's output, ncu's ==PROF== and warnings) are skipped. Used by ncu_profile.sh and
locked_clocks.py."""
import csv


def launches(lines):
    rows = [l for l in lines if l.startswith('"')]
    by_id = {}
    for r in csv.DictReader(rows):
        if not str(r.get("ID", "")).isdigit() or r.get("Metric Value") is None:
            continue
        entry = by_id.setdefault(int(r["ID"]), (r["Kernel Name"], {}))
        entry[1][r["Metric Name"]] = r["Metric Value"].replace(",", "")
    return [(i, *by_id[i]) for i in sorted(by_id)]
