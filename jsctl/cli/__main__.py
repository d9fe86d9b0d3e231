import sys

from jsctl.cli import main

sys.exit(main())
