"""docchat: chat over your PDFs, on AWS or on a laptop."""
