"""The HTTP service and web page (`sarag serve`)."""
