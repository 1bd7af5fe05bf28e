"""Store adapters: ``memory`` (reference, ships for your tests) and ``postgres``."""
