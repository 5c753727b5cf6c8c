import math


class Circle:
    def __init__(self, radius):
        self.radius = radius

    def area(self):
        return math.pi * self.radius**2

    def scaled(self, factor):
        return Circle(self.radius * factor)


def total_area(shapes):
    return sum(shape.area() for shape in shapes)
