"""Hardware: GPIO pins, serial devices and sensors, and the events they raise."""
