from evaluator.reference.server import main

raise SystemExit(main())
