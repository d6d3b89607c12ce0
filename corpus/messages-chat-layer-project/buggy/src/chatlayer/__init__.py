from chatlayer.layer import InMemoryLayer

__all__ = ["InMemoryLayer"]
