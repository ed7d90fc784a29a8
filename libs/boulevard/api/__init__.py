"""Code generated from protos/ by tools/gen_protos.py."""
