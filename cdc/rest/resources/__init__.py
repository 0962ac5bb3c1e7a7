"""The REST API's resources, one module per Kafka Connect resource class, each an APIRouter over the herder."""
