"""Text the tests of document drafts type into: a class whose lines repeat, as code does."""

BOX = """class Box:
    def __init__(self):
        self.items = []
        self.count = 0

    def clear(self):
        self.items = []
"""
# `self.items` is followed by ` = []` twice above, `self.count` by ` = 0` once
RESETTING = BOX + "\n    def reset(self):\n        self.items"
