"""A submission's identity from the LMS download to the LMS import (docs/judge.md, "The judge's namespace";
docs/report.md, "LMS"): `identity` (the judge's ids and the class index, OUT/class.json), `ingest` (the
download layouts: a folder per student, Moodle's and Canvas's, zipped or not) and `roster` (the LMS's own
gradebook export, joined to the submissions)."""
