import os

# What the tests run (python3 -m ci..., the shell scripts) finds the
# harness's package from the checkout's root, as under make, which exports
# the same (pytest.ini's pythonpath serves the tests' own imports).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ["PYTHONPATH"] = ROOT + (":" + os.environ["PYTHONPATH"]
                                   if os.environ.get("PYTHONPATH") else "")
