"""scry optimize's fixture (tests/e2e/test_optimize.py): one hot line, known by construction.
work() spends its time in the loop; the line `total += i * i % 7` runs 3 million times and takes
most of the program's time. The imports are there for the prompt's list of imports."""
import math
import os


def helper(n):
    return math.sqrt(n) + len(os.sep)


def work(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def main():
    print(work(3_000_000), helper(4))


if __name__ == "__main__":
    main()
