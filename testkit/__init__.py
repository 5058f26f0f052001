"""Test support for gpufleet's tests and benchmarks; not part of the installed wheel.

- :mod:`testkit.loopback`: loopback SSH nodes that hang, drop, refuse or stream canned
  lines, a real OpenSSH sshd launcher, update recorders, the ``ssh -G`` oracle.
- :mod:`testkit.snapshots`: synthetic fleet snapshots for the dashboard's tests and
  benchmark; :mod:`testkit.static_fleet` serves them through the facade;
  ``python -m testkit.preview`` opens the dashboard over them.
- :mod:`testkit.synthetic_history`: formula-driven snapshots for the history's tests.

Product code never imports this package (an import-linter contract holds it); the
demo's own simulator is :mod:`collectors.demo`.
"""
