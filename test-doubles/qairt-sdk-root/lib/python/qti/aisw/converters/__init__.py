# TEST DOUBLE placeholder of the SDK's Python package `qti` (lib/python/qti/): the
# double's qairt-converter "imports" it only when PYTHONPATH names lib/python, as the real one.
