"""Prints how many atexit callbacks there are at the end: the program registers none (3.11's
interpreter has one of its own)."""
import atexit

print(atexit._ncallbacks())
