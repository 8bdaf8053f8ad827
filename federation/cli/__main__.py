import sys

from federation.cli import main

sys.exit(main())
