"""Ingestion: PDF bytes -> pages (convert, ocr, isolate) -> chunks (chunk, notes) -> the index.

local.py runs it in one process (the CLI, `docchat serve`'s uploads); steps.py are the cloud's
Lambda steps. pagetext.py keeps each page's text; uploads.py adds and removes documents from
the web page and the API.
"""
