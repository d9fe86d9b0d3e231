"""`jsctl dashboard`: a local web page over the SDK (jobs, one job's curves and logs, clusters, cost).

data.py gathers what the pages show from jsctl.api (no web framework: testable alone); security.py
decides who may ask (loopback Host, token, cross-site checks); app.py is the Starlette application;
server.py binds the socket and runs uvicorn. Only `jsctl dashboard` imports this package's app and
server, so no other verb pays for starlette or uvicorn.
"""
