"""Agent authentication: the token model and hashing, the authority that verifies bearer tokens,
the process secrets, and upstream header secrets. Importing it is cheap: boto3 loads only with the
DynamoDB store and the SSM reads."""
