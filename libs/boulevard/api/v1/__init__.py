"""Generated from protos/boulevard/v1. Do not edit."""
