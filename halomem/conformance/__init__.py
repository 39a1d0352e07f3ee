"""The conformance kit: certify a retriever driver with six checks over a hermetic fixture."""
from .checks import CHECK_IDS, CheckResult, Report
from .kit import ConformanceKit, certify
from .loader import LoadedDriver, load_driver
from .scan import scan_source

__all__ = ["CHECK_IDS", "CheckResult", "Report", "ConformanceKit", "certify", "LoadedDriver", "load_driver",
           "scan_source"]
