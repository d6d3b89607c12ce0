"""sglang#1464's fix: the frame dict is made inside the loop, one per frame."""


def encode(frame):
    return f"data:image/jpeg;base64,{frame}"  # stands in for the JPEG/base64 encoding of a frame


def video_content(frames):
    content = [{"type": "text", "text": "Describe the video."}]
    for frame in frames:
        frame_format = {"type": "image_url", "image_url": {"url": encode(frame)}, "modalities": "video"}
        content.append(frame_format)
    return content


content = video_content([f"frame-{i}" for i in range(4)])
urls = [part["image_url"]["url"] for part in content[1:]]
print("urls:", urls)
assert len(set(urls)) == 4
