"""The fleet page's sparklines: an SVG string from numbers, scaled from zero to the largest value, with
gaps for hours without data, and an escaped accessible name."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from foldgate.edge.console.sparkline import sparkline_svg

SVG = "{http://www.w3.org/2000/svg}"


def points(svg: str) -> list[list[tuple[float, float]]]:
    """Each polyline's points, and each dot as a one-point run, in document order."""
    root = ET.fromstring(svg)
    runs: list[list[tuple[float, float]]] = []
    for el in root:
        if el.tag == f"{SVG}polyline":
            runs.append(
                [(float(x), float(y)) for x, y in (p.split(",") for p in el.attrib["points"].split())]
            )
        elif el.tag == f"{SVG}circle":
            runs.append([(float(el.attrib["cx"]), float(el.attrib["cy"]))])
    return runs


def test_values_run_left_to_right_from_zero_at_the_bottom_to_the_largest_at_the_top() -> None:
    svg = sparkline_svg([0, 5, 10], title="calls", width=104, height=24)
    root = ET.fromstring(svg)
    assert root.attrib["viewBox"] == "0 0 104 24"
    assert root.attrib["role"] == "img"
    [run] = points(svg)
    assert run == [(2.0, 22.0), (52.0, 12.0), (102.0, 2.0)]


def test_a_none_or_non_finite_value_is_a_gap_and_a_lone_value_between_gaps_a_dot() -> None:
    runs = points(sparkline_svg([1, 2, None, 4, float("nan"), 3, 3], title="t", width=64, height=14))
    assert [len(r) for r in runs] == [2, 1, 2]
    # The dot is the largest value: at the top.
    assert runs[1] == [(32.0, 2.0)]


def test_all_zero_or_no_data_draws_a_flat_line_at_the_bottom_or_nothing() -> None:
    [flat] = points(sparkline_svg([0] * 24, title="t", height=24))
    assert {y for _, y in flat} == {22.0}
    assert len(flat) == 24
    assert points(sparkline_svg([None] * 24, title="t")) == []
    assert points(sparkline_svg([], title="t")) == []
    [single] = points(sparkline_svg([7], title="t", width=24, height=24))
    assert single == [(12.0, 2.0)]


def test_negative_values_are_drawn_as_zero() -> None:
    [run] = points(sparkline_svg([-5, 10], title="t", width=24, height=24))
    assert run == [(2.0, 22.0), (22.0, 2.0)]


def test_the_title_is_escaped_so_a_hostile_server_name_is_text() -> None:
    hostile = '</title><script>alert(1)</script><title x="'
    svg = sparkline_svg([1, 2], title=f"{hostile}: calls")
    assert "<script>" not in svg
    root = ET.fromstring(svg)
    assert root.find(f"{SVG}title") is not None
    assert root.find(f"{SVG}title").text == f"{hostile}: calls"  # type: ignore[union-attr]
    # Only the elements this module writes, and no style attribute (the console's CSP forbids inline).
    assert {el.tag.removeprefix(SVG) for el in root.iter()} <= {"svg", "title", "line", "polyline", "circle"}
    assert not re.search(r"\sstyle=", svg)
