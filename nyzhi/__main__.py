from nyzhi.cli.main import main

raise SystemExit(main())
