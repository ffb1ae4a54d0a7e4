"""Kubernetes API access with the official ``kubernetes`` client, free of Pulumi, over the pure core."""
