"""A stand-in for TRTMC's trtmc_server package: importable only through a PYTHONPATH that names trtmc_lib."""
