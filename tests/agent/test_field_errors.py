"""A failed field is null with its NVML error name; what can never work is said once."""

from __future__ import annotations

import pynvml


def test_a_failing_call_is_null_with_its_error_name_every_tick(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(returns={"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_UNKNOWN}, samples=3)
    assert "power_w" not in run.hello.unsupported.get("0", [])
    for sample in run.samples:
        assert all(run.gpu(sample, i, "power_w") is None for i in range(8))
        assert all(sample.errs[str(i)] == {"power_w": "NVMLError_Unknown"} for i in range(8))
        assert all(run.gpu(sample, i, "temp_c") is not None for i in range(8))


def test_a_field_not_supported_at_start_goes_to_hello_once(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(returns={"nvmlDeviceGetPerformanceState": pynvml.NVML_ERROR_NOT_SUPPORTED})
    assert all("pstate" in run.hello.unsupported[str(i)] for i in range(8))
    for sample in run.samples:
        assert not sample.errs
        assert all(run.gpu(sample, i, "pstate") is None for i in range(8))


def test_missing_gpm_symbols_make_sm_activity_unsupported(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(returns={"nvmlGpmQueryDeviceSupport": None}, samples=2)
    assert {"sm_active", "tensor_active"} <= set(run.hello.unsupported["0"])
    assert run.gpu(run.samples[1], 0, "sm_active") is None
    assert run.gpu(run.samples[1], 0, "util_gpu") is not None


def test_an_old_driver_falls_back_to_the_classic_calls(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(
        returns={
            "nvmlDeviceGetTemperatureV": None,
            "nvmlDeviceGetCurrentClocksEventReasons": None,
            "nvmlDeviceGetFieldValues": None,
        },
        samples=1,
    )
    unsupported = run.hello.unsupported.get("0", [])
    # FI 230 has no classic call; everything with one still arrives.
    assert "recovery_action" in unsupported
    assert not {"temp_c", "clock_reasons", "ecc_unc_vol", "nvlink_crc_flit"} & set(unsupported)
    sample = run.samples[0]
    assert run.gpu(sample, 0, "temp_c") is not None
    assert run.gpu(sample, 0, "clock_reasons") is not None
    assert run.slow(sample, 0, "ecc_unc_vol") == 0
    assert run.slow(sample, 0, "nvlink_active") == run.hello.gpus[0].nvlinks


def test_a_failing_slow_call_is_null_with_its_error_on_slow_ticks(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(
        returns={"nvmlDeviceGetEnforcedPowerLimit": pynvml.NVML_ERROR_UNKNOWN},
        samples=2,
        slow_interval=5.0,
    )
    slow, fast = run.samples
    assert run.slow(slow, 3, "power_limit_w") is None
    assert slow.errs["3"] == {"power_limit_w": "NVMLError_Unknown"}
    assert run.slow(slow, 3, "nvlink_total") == run.hello.gpus[3].nvlinks
    assert run.hello.gpus[3].power_limit_w is None
    assert not fast.errs  # the slow field is not read on fast ticks


def test_a_batched_read_failing_at_start_keeps_its_fields_and_the_other_gpus(agent_run) -> None:  # type: ignore[no-untyped-def]
    run = agent_run(returns={"nvmlDeviceGetFieldValues": pynvml.NVML_ERROR_UNKNOWN}, samples=1)
    assert len(run.hello.gpus) == 8 and not run.hello.unsupported.get("0")
    sample = run.samples[0]
    assert run.gpu(sample, 0, "util_gpu") is not None
    assert run.slow(sample, 0, "ecc_unc_vol") is None
    assert sample.errs["0"]["ecc_unc_vol"] == "NVMLError_Unknown"
    assert run.slow(sample, 0, "power_limit_w") == 700.0
