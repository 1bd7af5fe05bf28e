"""Every way PostgreSQL jobs are inserted: ``router.py`` decides the route of each insert once;
each route is a module of its own (``single``, ``by_copy``, ``unique``, ``on_caller_connection``),
the encoding of new jobs for the statements is apart from them (``encoding``, ``copy_encoding``),
and ``loop_connection`` keeps the event loop's own connection."""
