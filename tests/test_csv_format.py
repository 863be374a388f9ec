"""Figure CSVs hold a fixed number of significant digits, whatever the float's last bits."""

from __future__ import annotations

import math

import pandas as pd

from smdlab.experiments.reproduce import csv_bytes


def test_floats_are_written_with_six_significant_digits():
    df = pd.DataFrame({"x": [math.pi, 1e-9 * math.pi, 123456789.0, -6e-17], "n": [1, 2, 3, 4]})
    text = csv_bytes(df).decode()
    assert text == "x,n\n3.14159,1\n3.14159e-09,2\n1.23457e+08,3\n0,4\n"
