"""moto's S3 server for the state tests, answering one request at a time.

`moto_server` (threaded) honours If-Match and If-None-Match on PutObject and If-Match on
DeleteObject, but checks the condition and then writes in two steps without a lock: two requests at
the same instant can both pass. S3 evaluates the condition atomically. Serving one request at a time
gives the tests S3's guarantee; JSCTL_TEST_MOTO=threaded runs the plain `moto_server` instead.
"""
import sys

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

if __name__ == "__main__":
    run_simple("127.0.0.1", int(sys.argv[1]), DomainDispatcherApplication(create_backend_app), threaded=False)
