"""REST handlers by verb and concern: ``call`` (the request and shared state), ``reads``,
``writes``, ``deletion``, ``watch``, ``patch``, ``logs``, ``binding``, ``reviews``; the served
types (``resources``, ``crds``), field rules (``objects``), ``selectors``, and server-side
printing (``tables``, ``printers``)."""
