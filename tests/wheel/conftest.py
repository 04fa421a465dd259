# user_project/ is a user's test suite that the wheel smoke (smoke.py) runs against the
# installed wheel, from a temporary copy: never collected from the source tree
collect_ignore = ["user_project", "smoke.py"]
