"""Hidden properties: graded, never shipped to students (the release builder leaves this package out)."""
