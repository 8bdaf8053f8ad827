"""The quota PNG: written, of the documented size, and not blank (also the committed example)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from federation.reports.models import UsageSeries
from federation.reports.plot import PLOT_SIZE_PX, plot_quota
from tests.reports.example_plot import OUT, example_report, write_example


def check_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(path)
    height, width = pixels.shape[:2]
    assert (width, height) == PLOT_SIZE_PX
    rgb = pixels[..., :3].reshape(-1, 3)
    inked = np.any(rgb < 0.95, axis=1).mean()
    assert inked > 0.10, f"only {inked:.1%} of the plot is not white"
    assert len(np.unique((rgb * 255).astype(np.uint8), axis=0)) > 50  # tenants' colours, text, grid


def test_the_example_plot_is_drawn(tmp_path: Path) -> None:
    check_png(write_example(tmp_path / "quota.png"))


def test_the_committed_example_is_current_size_and_not_blank() -> None:
    check_png(OUT)


def test_the_example_report_is_a_busy_week() -> None:
    report = example_report()
    assert report.series is not None and len(report.series.edges) == 29
    assert sum(report.series.total) > 0
    assert sum(row.fair_share for row in report.tenants) == pytest.approx(1.0)


def test_a_series_without_bins_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no time bins"):
        plot_quota(UsageSeries(edges=[0.0], tenants={}, total=[]), tmp_path / "x.png")
