"""scry optimize's redaction fixture (tests/e2e/test_optimize.py, issue 26 item 8): a hot loop
with secrets in the lines around it, which the prompt sends as context. DB_PASSWORD's value has
no secret shape (only its name says it is one); API_KEY's has (sk-...)."""
import os

DB_PASSWORD = "correct-horse-battery-staple"
API_KEY = "sk-scryfixture0123456789abcdefghijklmnopqrstuv"


def work(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


if __name__ == "__main__":
    print(work(3_000_000), len(DB_PASSWORD) + len(API_KEY) + len(os.sep))
