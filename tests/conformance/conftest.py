import pathlib
import sys

# the suite's helpers (conformance_spec, conformance_registry) import as top-level modules
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
