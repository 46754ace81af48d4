from fingerprint.cli import main

raise SystemExit(main())
