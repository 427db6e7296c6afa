"""The trusted processes inside the sandbox: the template (torch imported once) and one zygote per
submission. They never run candidate code; a worker is forked from a zygote."""
