from gpufleet.cli import main

raise SystemExit(main())
