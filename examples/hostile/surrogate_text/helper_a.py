# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# A helper the student's code never imports, whose prints and names say nothing; its sibling is the name of
# the folder (tests/test_judge_hostile.py grades a student whose folder name is not valid UTF-8).
# >>> hostile
NAME = "\udcff"
# <<< hostile
