#!/bin/bash
# The Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap) starts this and proxies the
# API Gateway stream to it. The layers are on PYTHONPATH under /opt/python.
PATH=/var/lang/bin:$PATH
exec python -m uvicorn --factory docchat.api:cloud_app --host 127.0.0.1 --port "${AWS_LWA_PORT:-8080}" --no-access-log
