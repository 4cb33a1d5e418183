"""Fixtures shaped like each LMS's own files (written here from the LMSs' documented formats, docs/report.md,
"LMS"): Canvas's gradebook export and submissions download, Moodle's grade export and "Download all
submissions", for the tests of autograder/lms and the exports."""

from pathlib import Path

CANVAS_ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,Práctica 2 (777),Current Points,Final Score
    Points Possible,,,,,278,(read only),(read only)
"García López, Ana",4242,A001,ana.garcia,Grupo 1,,,
"Oñate, Íñigo",4343,A002,inigo.onate,Grupo 1,,,
"Pérez, Luis",4444,A003,luis.perez,Grupo 2,,,
"Student, Test",9999,,,Grupo 1,,,
"""

MOODLE_HEADER = (
    "First name,Last name,ID number,Institution,Department,Email address,Assignment: Práctica 2 (Real),"
    "Last downloaded from this course"
)
MOODLE_ROSTER = (
    MOODLE_HEADER
    + """
Ana,García López,A001,,,ana@uni.es,-,1700000000
Íñigo,Oñate,A002,,,inigo@uni.es,-,1700000000
Luis,Pérez,A003,,,luis@uni.es,-,1700000000
"""
)

MOODLE_ROSTER_ES = (
    "Nombre,Apellido(s),Número de ID,Institución,Departamento,Dirección de correo,Tarea: Práctica 2 (Real)\n"
    """Ana,García López,A001,,,ana@uni.es,-
"""
)


def canvas_download(dest: Path, files: dict[str, bytes]) -> Path:
    """Canvas's "Download submissions", unzipped: flat files `<name>_[late_]<user id>_<submission id>_<file>`."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (dest / name).write_bytes(data)
    return dest


def canvas_files(attention: bytes, mask: bytes) -> dict[str, bytes]:
    return {
        "garcialopezana_late_4242_880001_attention.py": attention,
        "garcialopezana_late_4242_880002_mask.py": b"# first upload\n",
        "garcialopezana_late_4242_880003_mask-1.py": mask,  # the re-upload: wins
        "onateinigo_4343_880004_attention.py": attention,
        "intrusonobody_5555_880005_attention.py": attention,  # in no roster
    }


def moodle_files(attention: bytes, folders: bool) -> dict[str, bytes]:
    """Moodle's download: a folder per student, or the same prefix on flat files."""
    files = {}
    for full, n in (("Ana García López", 11), ("Íñigo Oñate", 12), ("ana garcía lópez", 13)):
        prefix = f"{full}_{n}_assignsubmission_file_"
        files[f"{prefix}/attention.py" if folders else f"{prefix}attention.py"] = attention
    return files
