"""Ray behind the campaign's Cluster port: a local 127.0.0.1 instance or an existing cluster (cluster.py),
the task that runs one attempt on a node and streams its journal (task.py), and the loopback switch that
must be set before Ray is imported (loopback.py). Import the submodules by name: this one imports no Ray."""
