# SPDX-License-Identifier: BSD-3-Clause
"""What tests read from a cflame flame graph: its SVG (svg_of), what the
SVG draws (graph_drawing_of, and check_deep_drawing of a graph deeper than
its height) and the
frames of its Vega-Lite spec as rows (frames_of), one dict per frame with
the fields docs/PROFILING.md names ("The data behind the graph"); and from
the other views (view_of): a top view's rows (top_rows_of), a chart's bars
(chart_bars_of), a sandwich's two halves (sandwich_halves_of).

The spec holds them compactly (flame/draw/fl_vegalite.c): data.values is a CSV
table of numbers, a line per frame; lookup transforms turn the string
columns' numbers into strings from datasets.strings, a CSV table of "k,s";
x1, pct and depth1 follow from the rest. This reads them by the spec's own
transforms, as tests/render/frames.mjs does, whose rows check_spec.mjs
compares with the data vega itself computes.
"""

import csv
import io
import re

VL_MIME = "application/vnd.vegalite.v5+json"
MD_MIME = "text/markdown"


def svg_of(bundle):
    """The SVG of a bundle: its one copy is in the markdown item, inside a
    <div> (flame/draw/fl_bundle.c), as %profsave NAME.svg writes it but for the
    file's last newline and its hint (svg_of_file)."""
    m = re.search(r"<svg\b.*</svg>", bundle[MD_MIME], re.S)
    assert m, f"no SVG in the bundle's markdown: {bundle[MD_MIME][:200]!r}"
    return m.group(0)


# The line an SVG file has, where a bundle's SVG does not, for viewers that
# run no script (flame/output/fl_output.c's write_svg).
SVG_FILE_HINT = ("<text class='cflame-hint' x='100%' dx='-10' y='12' font-size='10' "
                 "text-anchor='end' fill='#888888'>Open this file in a web browser to hover, "
                 "zoom and search.</text>\n")


def svg_of_file(text):
    """An SVG file's text as a bundle holds it (svg_of): without its hint
    and its last newline. Fails when the file has no hint."""
    assert SVG_FILE_HINT in text, "the SVG file has no hint for viewers without scripts"
    return text.replace(SVG_FILE_HINT, "", 1).rstrip("\n")


def _number(cell):
    """A CSV cell as format.parse "number" reads it: "" is null."""
    if cell == "":
        return None
    v = float(cell)
    return int(v) if v.is_integer() and "." not in cell else v


def frames_of(spec):
    """The rows of a spec, or of a bundle's spec."""
    spec = spec.get(VL_MIME, spec)
    data = spec["data"]
    assert data["format"]["type"] == "csv", data.get("format")
    rows = [{k: _number(v) for k, v in r.items()} for r in csv.DictReader(io.StringIO(data["values"]))]
    for t in spec["transform"]:
        if "lookup" not in t:
            continue
        source = t["from"]
        table = {int(e[source["key"]]): e for e in
                 csv.DictReader(io.StringIO(spec["datasets"][source["data"]["name"]]))}
        for row in rows:
            entry = table.get(row[t["lookup"]]) if row[t["lookup"]] is not None else None
            value = entry[source["fields"][0]] if entry else None
            row[t["as"][0]] = value if value != "" else None
    total = rows[0]["count"] if rows else 0
    for row in rows:
        row["x1"] = row["x0"] + row["count"]
        row["pct"] = 100 * row["count"] / total if total else 0
        row["depth1"] = row["depth"] + 1
    return rows


def view_of(spec):
    """The view a spec (or a bundle) draws: "flame" (flame and callers
    graphs, and diffs), or the name of another view ("top")."""
    spec = spec.get(VL_MIME, spec)
    return spec.get("usermeta", {}).get("cflame", {}).get("view", "flame")


def top_rows_of(spec):
    """The rows of a top view's spec (or bundle), by function name: dicts
    with func, file, module, self and total (fl_top.c)."""
    spec = spec.get(VL_MIME, spec)
    assert view_of(spec) == "top", f"not a top view: {spec.get('description')}"
    return {r["func"]: r for r in spec["layer"][0]["data"]["values"]}


def chart_bars_of(spec):
    """The bars of a chart view's spec (or bundle), their strings read:
    dicts with func, file, module, thread, color, depth, t0, t1, count
    (fl_chart.c)."""
    spec = spec.get(VL_MIME, spec)
    assert view_of(spec) == "chart", f"not a chart: {spec.get('description')}"
    strings = {r["k"]: r["s"] for r in spec["datasets"]["strings"]}
    bars = []
    for r in spec["layer"][0]["data"]["values"]:
        bars.append({"func": strings[r["f"]], "file": strings.get(r.get("fi")),
                     "module": strings.get(r.get("m")), "thread": strings[r["th"]],
                     "color": strings[r["co"]], "depth": r["d"], "t0": r["t0"], "t1": r["t1"],
                     "count": r["n"]})
    return bars


def sandwich_halves_of(spec):
    """The two halves of a sandwich's spec (or bundle), callers' then
    callees', each as frames_of reads a flame graph (fl_sandwich.c)."""
    spec = spec.get(VL_MIME, spec)
    assert view_of(spec) == "sandwich", f"not a sandwich: {spec.get('description')}"
    return [frames_of(dict(part, datasets=spec["datasets"])) for part in spec["vconcat"]]



_SVG = "{http://www.w3.org/2000/svg}"
_LABEL_BASELINE = 0.36 * 11  # a label's baseline below its level's middle (flame/draw/fl_svg.c)
# A band's words, the longest that fit its piece (flame/draw/fl__render.c).
BAND_WORDS = re.compile(r"^\u2026 ([0-9,]+)(?: more levels(?: \(click to open\))?)?$")


def graph_drawing_of(svg):
    """What a flame graph's SVG (text) draws, read with an XML parser:
    notes, the header's lines; frames, the displayed ones, each
    {"name", "x", "y", "w", "label"} (label: the text drawn on it, or None);
    band, its pieces, each {"w", "levels"}: the levels it says it holds
    (None where it says nothing)."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(svg)
    notes = [t.text or "" for t in root.find(f"{_SVG}g").iter(f"{_SVG}text")]
    labels = {}
    for g in root.iter(f"{_SVG}g"):
        if g.get("pointer-events") == "none":
            for t in g.iter(f"{_SVG}text"):
                labels[(round(float(t.get("x")) - 3, 1), round(float(t.get("y")), 1))] = t.text
    frames = []
    for p in root.iter(f"{_SVG}path"):
        if p.get("display") == "none":
            continue
        m = re.match(r"M([-0-9.]+) ([-0-9.]+)h([-0-9.]+)", p.get("d"))
        x, y, w = map(float, m.groups())
        label = labels.get((round(x, 1), round(y + _LABEL_BASELINE, 1)))
        frames.append({"name": p.find(f"{_SVG}title").text.split("\n")[0], "x": x, "y": y, "w": w,
                       "label": label})
    band = []
    for g in root.iter(f"{_SVG}g"):
        if g.get("class") != "cflame-band":
            continue
        words = []
        for t in g.iter(f"{_SVG}text"):
            m = BAND_WORDS.match(t.text or "")
            words.append((float(t.get("x")) - 3, int(m.group(1).replace(",", "")) if m else None))
        # A piece's words start 3 px in (each place rounded to 0.1 px).
        band = [{"w": float(r.get("width")),
                 "levels": next((n for x, n in words if abs(x - float(r.get("x"))) < 0.15), None)}
                for r in g.findall(f"{_SVG}rect")]
    return {"notes": notes, "frames": frames, "band": band}


# A frame this wide has room for three characters of its label
# (flame/draw/fl_svg.c: 6.6 px each, 3 px of padding either side), whatever its
# width before the SVG rounded it to 0.1 px.
LABEL_MIN_WIDTH = 3 * 6.6 + 6 + 0.05


def unlabelled(drawing):
    """The displayed frames of graph_drawing_of's drawing wide enough for a
    label that have none, or another frame's (a label is the frame's name,
    or its start cut with "…")."""
    def fits(f):
        label = f["label"]
        return label is not None and (label == f["name"] or (
            label.endswith("\u2026") and f["name"].startswith(label[:-1])))
    return [f for f in drawing["frames"] if f["w"] >= LABEL_MIN_WIDTH and not fits(f)]


def check_deep_drawing(svg, levels=None):
    """A graph deeper than its height, drawn by default: its root and every
    frame wide enough are labelled, each level is drawn or counted in the
    band (levels, the root's included, when known; else the band holds
    some), and the notes name the options that draw the rest. Returns the
    height the notes name."""
    d = graph_drawing_of(svg)
    widest = max(f["w"] for f in d["frames"])
    roots = [f for f in d["frames"] if f["w"] >= widest - 0.01]
    assert roots and all(f["label"] == f["name"] for f in roots), roots[:3]
    assert unlabelled(d) == [], unlabelled(d)[:5]
    drawn = len({f["y"] for f in d["frames"]})
    said = [p["levels"] for p in d["band"] if p["levels"] is not None]
    # A part of the band says "… N": it is labelled where those 2 + digits
    # characters fit (flame/draw/fl__render.c, fl__band_label).
    room = (2 + len(f"{max(said, default=0):,}")) * 6.6 + 6 + 0.05
    assert said and all(p["levels"] for p in d["band"] if p["w"] >= room), d["band"]
    if levels is not None:
        assert drawn + max(said) == levels, (drawn, d["band"])
    note = " ".join(d["notes"])
    assert "recur=flat" in note and "--recur flat" in note, note
    m = re.search(r"height=(\d+) \(--height (\d+)\) draws them all", note)
    assert m and m.group(1) == m.group(2), note
    return int(m.group(1))
