"""Expected figures per GPU model: datasheet peaks and the fraction a probe achieves.

``peak`` is NVIDIA's published figure (dense, i.e. without 2:4 sparsity); the
sources are listed in docs/probes.md. ``achievable`` is what these probes reach on a
healthy GPU (cuBLAS GEMM, a copy kernel, pinned memcpy, NCCL ring all-reduce), as a
fraction of that peak: not an NVIDIA figure but our measurement. GEMM, HBM and PCIe
were measured on a real H100 80GB HBM3 (tests/fixtures/h100/, docs/probes.md) and
agree with the H200 figures of the machines lent to this project; the all-reduce
fraction is still an estimate (one GPU, no NVLink).
"""

from __future__ import annotations

from dataclasses import dataclass

# The fraction of peak a healthy GPU reaches in each probe, rounded down from a real
# H100 SXM (2026-11-23): bf16 805 of 989 TFLOPS (81 %), tf32 416 of 494 (84 %), d2d copy
# 3,015 of 3,350 GB/s (90 %), pinned memcpy 55.1 of 64 GB/s (86 %). With the default
# slow_fraction (0.8) "slow" starts about a fifth below that healthy GPU. The first
# estimates (0.70 / 0.85 / 0.80) let a GPU that had lost a quarter of its GEMM speed pass.
GEMM_FRACTION = 0.80
HBM_FRACTION = 0.88
PCIE_FRACTION = 0.85
NCCL_FRACTION = 0.75  # not measured: the lent machine has one GPU


@dataclass(frozen=True, slots=True)
class ExpectedFigure:
    """What one probe metric should reach on one GPU model."""

    model: str
    probe: str
    metric: str
    peak: float
    unit: str
    achievable_fraction: float
    source: str

    @property
    def achievable(self) -> float:
        """The figure a healthy GPU should reach in this probe."""
        return self.peak * self.achievable_fraction


def _model(
    model: str,
    sheet: str,
    bf16: float,
    tf32: float,
    hbm_gbs: float,
    pcie_gbs: float,
    nvlink_gbs: float | None,
) -> tuple[ExpectedFigure, ...]:
    """One model's figures; ``nvlink_gbs`` is per-direction NVLink bandwidth per GPU."""
    figures = [
        ExpectedFigure(model, "gemm", "bf16", bf16, "TFLOPS", GEMM_FRACTION, sheet),
        ExpectedFigure(model, "gemm", "tf32", tf32, "TFLOPS", GEMM_FRACTION, sheet),
        ExpectedFigure(model, "hbm", "d2d", hbm_gbs, "GB/s", HBM_FRACTION, sheet),
        ExpectedFigure(model, "pcie", "h2d", pcie_gbs, "GB/s", PCIE_FRACTION, sheet),
        ExpectedFigure(model, "pcie", "d2h", pcie_gbs, "GB/s", PCIE_FRACTION, sheet),
    ]
    if nvlink_gbs is not None:
        figures.append(
            ExpectedFigure(
                model, "nccl", "allreduce_busbw", nvlink_gbs, "GB/s", NCCL_FRACTION, sheet
            )
        )
    return tuple(figures)


# PCIe per direction: Gen5 x16 = 64 GB/s, Gen4 x16 = 32 GB/s (datasheets give both ways summed).
H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet"
EXPECTED_FIGURES: tuple[ExpectedFigure, ...] = (
    *_model("H100 SXM", H100_SHEET + ", H100 SXM", 989.0, 494.0, 3350.0, 64.0, 450.0),
    *_model("H100 PCIe", H100_SHEET + ", H100 PCIe", 756.0, 378.0, 2000.0, 64.0, None),
    *_model(
        "H200", "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM", 989.0, 494.0, 4800.0, 64.0, 450.0
    ),
    *_model(
        "A100 80GB SXM",
        "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM",
        312.0,
        156.0,
        2039.0,
        32.0,
        300.0,
    ),
    *_model(
        "B200",
        "NVIDIA HGX B200 / DGX B200 datasheets, per GPU",
        2250.0,
        1100.0,
        8000.0,
        64.0,
        900.0,
    ),
)


def model_of(device_name: str | None) -> str | None:
    """Our model key for a driver-reported name, None when we hold no figures for it.

    ``NVIDIA H100 80GB HBM3`` is the SXM part; NVL and other variants are left out
    rather than judged against the wrong datasheet.
    """
    if not device_name:
        return None
    name = device_name.upper()
    if "NVL" in name:
        return None
    if "H100" in name:
        return (
            "H100 PCIe"
            if "PCIE" in name
            else ("H100 SXM" if "HBM3" in name or "SXM" in name else None)
        )
    if "H200" in name:
        return "H200"
    if "A100" in name and "SXM" in name and "80GB" in name:
        return "A100 80GB SXM"
    if "B200" in name:
        return "B200"
    return None


def expected_for(
    model: str | None,
    probe: str,
    metric: str,
    figures: tuple[ExpectedFigure, ...] = EXPECTED_FIGURES,
) -> ExpectedFigure | None:
    """The expected figure of ``probe``/``metric`` on ``model``, None when there is none."""
    for figure in figures:
        if (figure.model, figure.probe, figure.metric) == (model, probe, metric):
            return figure
    return None
