"""`tf.distribute.experimental`: TensorFlow's experimental names of the strategy API
(`MultiWorkerMirroredStrategy`, `CommunicationOptions`, `CommunicationImplementation`)."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
