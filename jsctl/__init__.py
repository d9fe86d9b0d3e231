__version__ = "0.1.0"
# The version of every JSON document jsctl prints (validate, graph, plan, status, reports): the major
# number changes only when a field is removed or changes meaning; new fields may come in a minor one.
JSON_FORMAT_VERSION = "1.0"
