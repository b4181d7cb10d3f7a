"""`sam build` and `sam local` on a machine with no image registry: Docker from Debian, a stand-in
for the Lambda Python base image built from Debian and PyPI, a Powertools layer from PyPI and an
x86_64 variant of template.yaml generated from it. `make sam-local` runs tests/sam_local with
these; docs/sam-local.md says what differs from AWS's images."""
