"""Shipped, opt-in fixes for the aliasing bugs aliascheck finds in other libraries.

Each module is named after the library it fixes and imports it at its top, so
import only the one you need: ``aliascheck.fixes.cloudpickle``.
"""
